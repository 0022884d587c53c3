"""Long-context answers: an abstention that describes the document stays an abstention.

A long-context answer that opens by saying the document lacks what was asked and then summarises
what the document does contain is an abstention; one that answers and mentions a gap on the way
is an answer. These outputs are hand-written in the manner of current models (GPT-4o, Claude 3.5,
Gemini 1.5, Llama 3, Qwen 2.5, Mistral), not real outputs: the real ones are scored by
``test_verdict_accuracy.py``. Each is read with and without its question.
"""

from __future__ import annotations

import pytest

import selfroute as sr

#: (output, question): the output declines.
ABSTENTIONS = [
    (
        "The text does not provide information about what Mrs. Hale gave her daughter after the funeral. It focuses on the events leading up to the funeral, including the family's preparations, the arrival of the relatives from London and the reading of the will.",
        "What did Mrs. Hale give her daughter after the funeral?",
    ),
    (
        "The passage does not explicitly mention why Tom left the village. It describes his childhood with his grandmother, his apprenticeship at the blacksmith's and his friendship with the miller's son, but the reason for his departure is never stated.",
        "Why did Tom leave the village?",
    ),
    (
        "There is no mention of the dataset size in the paper. The paper discusses the architecture of the proposed model, which consists of a BiLSTM encoder and an attention-based decoder, and reports BLEU scores on the WMT14 English-German benchmark.",
        "How large is the dataset?",
    ),
    (
        "The document doesn't say what Arthur found in the cellar. What it does describe is the night he arrived at the house: he was greeted by the housekeeper, shown to his room on the second floor, and warned not to go downstairs after dark.",
        "What did Arthur find in the cellar?",
    ),
    (
        "I couldn't find any specific information in the text about the colour of the car Elena drove. The book covers her journey across the country, her meetings with various relatives and her eventual decision to settle in Oregon, but it doesn't mention the car's colour.",
        "What colour was Elena's car?",
    ),
    (
        "Based on the text provided, there's no clear answer to what Marcus whispered to Julia at the train station. The scene at the station is described in some detail, including the rain, the crowd on the platform and Julia's tears, but the content of his words is never revealed.",
        "What did Marcus whisper to Julia at the station?",
    ),
    (
        "The novel doesn't explicitly state how old Hannah is when she leaves for college. Here's what we do know from the text:\n\n1. She finished high school in the spring.\n2. She worked at her uncle's bakery over the summer.\n3. She left for Boston in late August with two suitcases.\n\nHowever, her exact age is never given.",
        "How old is Hannah when she leaves for college?",
    ),
    (
        "The text does not directly address this question. While the document discusses the treaty negotiations between the two kingdoms at length, including the roles of the ambassadors and the disputed border territories, it does not say which king signed first.",
        "Which king signed the treaty first?",
    ),
    (
        "The provided text does not contain the answer to this question. The text is about the history of the Roman aqueducts, describing their construction, the engineering techniques used and their role in supplying water to the cities of the empire.",
        "Who designed the Pont du Gard?",
    ),
    (
        "The text does not mention what happened to the dog.\n\nHowever, it does mention:\n\n* The family moved to the farm in early summer.\n* The children spent most of their days by the river.\n* Their father repaired the old barn before winter.",
        "What happened to the dog?",
    ),
    (
        "Unfortunately, the text does not provide the information you are looking for. The story is about a young woman named Clara who moves to the city and works as a seamstress. It follows her struggles, her friendships with her coworkers and her eventual success as a dressmaker.",
        "What was Clara's mother's name?",
    ),
    (
        "The article does not provide specific details on the number of annotators. It only mentions that the data was annotated by native speakers and that inter-annotator agreement was measured with Cohen's kappa, which reached 0.81.",
        "How many annotators labelled the data?",
    ),
    (
        "The text does not provide a clear answer as to why the captain changed course. It does, however, describe the storm the ship ran into on the third night, the damage to the mainmast and the crew's growing unrest.",
        "Why did the captain change course?",
    ),
    (
        "The paper does not report the training time of the model. It does provide details about the hardware, stating that all experiments were run on eight NVIDIA V100 GPUs, and it lists the hyperparameters in Table 3, including a learning rate of 3e-5 and a batch size of 32.",
        "How long did it take to train the model?",
    ),
    (
        "The book does not reveal the name of the stranger. It says that he arrived on a grey horse, that he wore a long black coat and that he spoke with a foreign accent. He stays at the inn for three nights and leaves before dawn on the fourth day.",
        "What is the stranger's name?",
    ),
    (
        "The document does not state how much the company paid for the acquisition. According to the report, the acquisition was completed in the third quarter and was financed through a combination of cash on hand and a new credit facility. The report also notes that integration costs are expected to continue into next year.",
        "How much did the company pay for the acquisition?",
    ),
    (
        "The provided document does not mention whether the authors release their code. The paper introduces a new benchmark for multilingual question answering covering 14 languages, describes how the questions were collected from native speakers, and compares several baselines, including mBERT and XLM-R.",
        "Do the authors release their code?",
    ),
    (
        "I'm sorry, but the text doesn't specify where Lucy hid the letter. The chapter describes her conversation with her sister, her walk through the garden and her return to the house before supper.",
        "Where did Lucy hide the letter?",
    ),
    (
        "The information about the ship's captain is not provided in the text. The text mainly describes the voyage itself: the departure from Liverpool, the weeks of calm weather, and the outbreak of fever among the passengers.",
        "Who was the ship's captain?",
    ),
    (
        "The text does not specify the reason for the quarrel between the brothers. Here is what it does say:\n\n- The brothers had not spoken for ten years.\n- Their mother tried to reconcile them at her birthday dinner.\n- The elder brother left the dinner early.",
        "Why did the brothers quarrel?",
    ),
    (
        "The excerpt does not say who killed the gamekeeper. It does say that the body was found near the old quarry on a Sunday morning, that the police questioned several villagers, and that the squire offered a reward for information.",
        "Who killed the gamekeeper?",
    ),
    (
        "Unfortunately, the paper does not mention the specific languages used in the evaluation. The paper describes a method for cross-lingual transfer that aligns multilingual embeddings using a small bilingual dictionary, and it reports improvements over the baselines on two tasks.",
        "Which languages are used in the evaluation?",
    ),
    (
        "The document does not contain information about the salary of the chief executive. The document is the company's sustainability report and discusses its carbon emissions, its water usage and its programmes for employee wellbeing.",
        "What is the chief executive's salary?",
    ),
    (
        "The passage doesn't mention anything about the wedding. The text primarily focuses on the preparations for the harvest and the tensions between the two families over the boundary of the fields. Later chapters describe the trial and its aftermath.",
        "When did the wedding take place?",
    ),
    (
        "I'm unable to find the answer to this question in the provided text. The text discusses the early life of the composer, his studies in Vienna and his first symphony, which was poorly received, but it says nothing about his marriage.",
        "Whom did the composer marry?",
    ),
    (
        "The text does not explicitly state what Maria's job was. However, the text mentions that Maria lived in a small apartment above the bakery, that she walked to the station every morning and that she often came home late in the evening. It also mentions that she was saving money to visit her family in Portugal.",
        "What was Maria's job?",
    ),
    (
        "The book does not give any details about the fate of the lighthouse keeper. It tells the story of the storm from the point of view of the fishermen's wives, who wait on the pier through the night. The chapter ends with the arrival of the lifeboat at dawn.",
        "What happened to the lighthouse keeper?",
    ),
    (
        "There is no information in the document about when the bridge was completed. The document describes the design competition, the choice of the architect and the controversy over the cost of the steel. It also mentions the opposition of local residents to the project.",
        "When was the bridge completed?",
    ),
    (
        "The context does not provide the answer. The given text is an excerpt from a novel that describes a dinner party at the Ashford estate, where the guests discuss politics and the weather.",
        "What did Lady Ashford say to the vicar?",
    ),
    (
        "The novel never actually says what was in the box. The box is mentioned several times: it arrives with the morning post in chapter two, Eleanor keeps it locked in her wardrobe, and she takes it with her when she leaves for London.",
        "What was in the box?",
    ),
    (
        "The document doesn't provide the population of the town. It focuses on the town's history, its main industries, which are fishing and tourism, and the festivals held there every summer.",
        "What is the population of the town?",
    ),
    (
        "The article doesn't mention how many layers the network has. It does describe the network as a convolutional architecture with residual connections and batch normalization, trained end to end.",
        "How many layers does the network have?",
    ),
    (
        "**The document does not specify who designed the logo.**\n\nThe report discusses the company's rebranding in 2019, including the new colour palette, the change of name and the launch campaign in Europe. It also notes that the rebranding cost about $4 million.",
        "Who designed the logo?",
    ),
    (
        "Unfortunately, the provided text doesn't mention the name of the hospital where Anna was born. The text does mention that her parents lived in Krakow at the time and that her father worked as a teacher.",
        "In which hospital was Anna born?",
    ),
    (
        "The question cannot be answered from the article. The article describes a new dataset of annotated tweets for hate-speech detection in three languages and reports baseline results using logistic regression and BERT.",
        "What is the inter-annotator agreement?",
    ),
    (
        "I could not find the answer to this question in the document. The document mentions the merger several times, noting that it was approved by the shareholders in March and completed in June.",
        "Who advised the company on the merger?",
    ),
    (
        "The text doesn't say why Julian refused the offer. It does say that he met Mr. Crane twice in London and that after the second meeting he wrote to his sister that he would stay in Yorkshire.",
        "Why did Julian refuse the offer?",
    ),
    (
        "Based on the provided text, it is not mentioned what the robot's name was. The text describes how the robot was built in the laboratory, how it learned to walk and how it escaped into the city.",
        "What was the robot's name?",
    ),
    (
        "The paper does not discuss the limitations of the proposed approach. Instead, it focuses on the experimental results, showing that the model outperforms the baselines on all four benchmarks.",
        "What are the limitations of the approach?",
    ),
    (
        "There is no information in the text about how long the journey took. According to the text, the travellers left Lisbon in the spring, stopped in Madeira to take on water, and reached Brazil before the rainy season.",
        "How long did the journey take?",
    ),
    (
        "The novel does not reveal what happened to Thomas after the war. The last chapter mentions him only once, when his mother receives a letter from him postmarked in France.",
        "What happened to Thomas after the war?",
    ),
    (
        "The passage provides no details about the prize money. It mentions that the competition was held in Vienna, that twelve pianists took part, and that the jury was chaired by a famous conductor.",
        "How much was the prize money?",
    ),
    (
        "The study does not report the participants' average age. Here is what it does report:\n- 240 participants were recruited from two universities.\n- 58% were women.\n- All were native speakers of English.",
        "What was the average age of the participants?",
    ),
    (
        "The document does not provide this information. It contains the minutes of the board meeting of 12 March, which cover the budget, the appointment of a new treasurer and the plans for the summer fair.",
        "Who chaired the board meeting?",
    ),
    (
        "I'm sorry, but the text does not indicate where the treasure was hidden. The story mentions a map, a locked chest and an old sailor who claims to know the island, but the hiding place is never described.",
        "Where was the treasure hidden?",
    ),
    (
        "The text does not give Mr. Ellis's first name. He is referred to throughout as Mr. Ellis or simply as the lawyer, and we learn that he has practised in the town for thirty years.",
        "What is Mr. Ellis's first name?",
    ),
    (
        "The article does not say what the authors use as the baseline. It states that the proposed model achieves 87.2% accuracy on the test set and that the improvement is statistically significant.",
        "What baseline do the authors use?",
    ),
]

#: (output, question): the output answers, and says on the way what the document lacks.
ANSWERS = [
    (
        "The authors evaluate on three datasets: SQuAD, TriviaQA and Natural Questions. The paper does not report the size of the validation split for TriviaQA.",
        "Which datasets do the authors evaluate on?",
    ),
    (
        "The text does not explicitly state the reason, but it strongly implies that he left because of his debts: he sells his horse, avoids his creditors and leaves the town at night.",
        "Why did he leave the town?",
    ),
    (
        "While the document doesn't give an exact date, it indicates that the battle took place in the autumn of 1643, shortly after the siege of Gloucester.",
        "When did the battle take place?",
    ),
    (
        "The book doesn't name the town directly, but it is clearly Bath: the narrator describes the Pump Room, the Royal Crescent and the Roman baths.",
        "In which town is the story set?",
    ),
    (
        "Although the paper does not explicitly mention BERT, it uses a pre-trained transformer encoder with twelve layers and 110 million parameters, which matches BERT-base.",
        "Which encoder do they use?",
    ),
    (
        "The text does not state her age outright. However, she turns sixteen in the first chapter, so she is sixteen when she meets Tom at the fair.",
        "How old is she when she meets Tom?",
    ),
    (
        "The captain changes course because of the storm. The text says that on the third night the wind rose, the mainmast cracked, and he ordered the ship to turn south towards the nearest port. The exact port is not named.",
        "Why did the captain change course?",
    ),
    (
        "Maria worked as a nurse at the city hospital. The text mentions her night shifts and her colleagues on the children's ward, although it never names the hospital.",
        "What was Maria's job?",
    ),
    (
        "The document does not give a precise figure, but it states that the company paid roughly $2 billion for the acquisition, financed mostly with cash.",
        "How much did the company pay for the acquisition?",
    ),
    (
        "The novel does not say so directly, but it is strongly implied that the gardener killed the gamekeeper: his boots are found near the quarry, he lies about where he was that morning, and he flees the village the next day.",
        "Who killed the gamekeeper?",
    ),
    (
        "It is not explicitly mentioned, but the context suggests that the optimizer was Adam: the authors refer to the default Adam settings of the Transformer implementation they build on.",
        "Which optimizer was used?",
    ),
    (
        "The model is trained for 100 epochs with early stopping. The learning rate is 3e-5 and the batch size is 32. The paper does not mention the optimizer.",
        "What is the batch size?",
    ),
    (
        "The brothers quarrelled over their father's will: the elder brother believed he had been cheated of the farm. The text does not say how long the dispute lasted, but it mentions that they had not spoken for ten years by the time of their mother's birthday.",
        "Why did the brothers quarrel?",
    ),
    (
        "Based on the text, Lucy hid the letter inside the hollow oak at the end of the garden. The text does not explicitly say why she chose that spot, but it was where she and her sister used to leave messages as children.",
        "Where did Lucy hide the letter?",
    ),
    (
        "The paper does not use a separate validation set. Instead, it performs five-fold cross-validation on the training data and reports the mean accuracy.",
        "Do they use a validation set?",
    ),
    (
        "There is no direct statement, but the evidence points to the housekeeper: she had the only key to the cellar, and she was seen leaving the house that night.",
        "Who locked the cellar?",
    ),
    (
        "The document does not mention a specific date for the wedding; however, it takes place the day after the harvest festival, in early October.",
        "When did the wedding take place?",
    ),
    (
        "The text doesn't specify his exact profession, but he is most likely a lawyer, since he works at a firm in the Temple, drafts wills and appears in court on behalf of his clients.",
        "What is his profession?",
    ),
    (
        "No, the study does not use a control group. All participants received the intervention, and outcomes were compared with their own baseline measurements.",
        "Does the study use a control group?",
    ),
    (
        "The composer married Clara Weber in 1852. The text does not mention whether they had children.",
        "Whom did the composer marry?",
    ),
    (
        "The excerpt does not name the gamekeeper's killer outright, but it reveals in the final chapter that the squire's son confessed to the crime in a letter to the vicar.",
        "Who killed the gamekeeper?",
    ),
    (
        "The population is not given as a single figure; the document reports 12,400 residents in the town proper and about 30,000 including the surrounding parishes.",
        "What is the population of the town?",
    ),
    (
        "The network has 50 layers. The article does not give the number of parameters, but it describes it as a ResNet-50 backbone with a feature pyramid on top.",
        "How many layers does the network have?",
    ),
    (
        "The logo was designed by the studio Pentagram. The report does not say how much the studio was paid.",
        "Who designed the logo?",
    ),
    (
        "The text doesn't say explicitly why Julian refused the offer, but it implies that he did not trust Mr. Crane after learning about the forged letters.",
        "Why did Julian refuse the offer?",
    ),
    (
        "The robot is called Unit 7 in the laboratory records, although the children later give it the name Pip. The text does not explain why they chose that name.",
        "What was the robot's name?",
    ),
    (
        "The journey took about three months. The text does not give exact dates, but the travellers left Lisbon in March and reached Brazil in early June.",
        "How long did the journey take?",
    ),
    (
        "While the text does not state the prize money directly, it says that the winner received 10,000 schillings and a concert tour.",
        "How much was the prize money?",
    ),
    (
        "The average age is not reported as a single number. However, the study states that participants were between 18 and 25 years old, with most aged 19 or 20.",
        "What was the average age of the participants?",
    ),
    (
        "The treasure was hidden in a cave beneath the lighthouse. The story does not say who hid it there.",
        "Where was the treasure hidden?",
    ),
    (
        "Although the article doesn't name it as such, the baseline is a BiLSTM-CRF tagger: the authors compare against the system of Lample et al. (2016) throughout.",
        "What baseline do the authors use?",
    ),
    (
        "The paper does not report inter-annotator agreement with kappa, but it says that the two annotators agreed on 91% of the tweets.",
        "What is the inter-annotator agreement?",
    ),
    (
        "The board meeting was chaired by Margaret Lewis, the vice-chair, because the chair was ill. The minutes do not record how long the meeting lasted.",
        "Who chaired the board meeting?",
    ),
]


@pytest.mark.parametrize("with_question", [False, True])
@pytest.mark.parametrize(("text", "question"), ABSTENTIONS)
def test_an_opening_decline_and_a_description_of_the_document_is_an_abstention(
    text: str, question: str, with_question: bool
) -> None:
    verdict = sr.parse_verdict(text, question=question if with_question else None)
    assert verdict.kind is sr.VerdictKind.REFUSAL, verdict


@pytest.mark.parametrize("with_question", [False, True])
@pytest.mark.parametrize(("text", "question"), ANSWERS)
def test_an_answer_that_mentions_a_gap_stays_an_answer(
    text: str, question: str, with_question: bool
) -> None:
    verdict = sr.parse_verdict(text, question=question if with_question else None)
    assert verdict.answered, verdict
